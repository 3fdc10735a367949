# Prints a valid matrix, then leaves a background child holding standard output open, and
# exits 0: nvidia-smi finished and succeeded; only its pipe lingers.
import os
import sys
import time

with open(os.environ["FAKE_SMI_MATRIX"], "rb") as f:
    matrix = f.read()
with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
os.write(1, matrix)
pid = os.fork()
if pid == 0:
    with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\n")
    while True:
        time.sleep(1000)
os._exit(0)
