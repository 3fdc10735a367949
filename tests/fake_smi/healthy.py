# Prints a valid matrix and exits 0: the healthy counterpart.
import os

with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
with open(os.environ["FAKE_SMI_MATRIX"], "rb") as f:
    os.write(1, f.read())
