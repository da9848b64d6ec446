# box (1 GPU): the default model's first third to /tmp (the model travels in three calls; wg_run71c.sh checks it)
cp .carry/model.part.00 /tmp/model.part.00 && ls -la /tmp/model.part.00
