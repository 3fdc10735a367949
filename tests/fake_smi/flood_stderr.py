# Prints warnings on standard error without end (nothing on standard output).
import os

with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
line = b"WARNING: infoROM is corrupted at gpu 0000:18:00.0\n" * 1024
while True:
    os.write(2, line)
