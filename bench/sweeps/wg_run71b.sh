# box (1 GPU): the default model's second third to /tmp
cp .carry/model.part.01 /tmp/model.part.01 && ls -la /tmp/model.part.*
