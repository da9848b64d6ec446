# box (1 GPU), call 1 of 2: the default model's first 60 MiB to /tmp (the file is over the 64 MiB carry)
cp .carry/m/part.00 /tmp/m93.part.00 && ls -la /tmp/m93.part.00
