# Hangs forever, like nvidia-smi on a GPU that stopped answering.
import os
import time

with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
while True:
    time.sleep(1000)
