# box, call B of 3 (right after mgraph_run21.sh): model part 1 to /tmp
cp .carry/model.part.aa /tmp/m.aa && ls -la /tmp/m.aa
