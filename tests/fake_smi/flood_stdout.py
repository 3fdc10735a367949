# Prints matrix-like rows on standard output without end.
import os

with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
row = b"GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t0-55,112-167\t0\t\tN/A\n" * 1024
while True:
    os.write(1, row)
