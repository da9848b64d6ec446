# box (1 GPU), call 1 of 3: the default model's first third to /tmp (the file and the tree are over the 64 MiB carry)
cp .carry/m/part.00 /tmp/m93.part.00 && ls -la /tmp/m93.part.00
