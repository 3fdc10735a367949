# Closes standard output and error (the reader sees end of file), then hangs.
import os
import time

with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
os.close(1)
os.close(2)
while True:
    time.sleep(1000)
