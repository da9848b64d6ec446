# box (1 GPU), call 2 of 3: the default model's second third to /tmp
cp .carry/m/part.01 /tmp/m93.part.01 && ls -la /tmp/m93.part.01
