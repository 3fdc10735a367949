# A valid matrix whose GPU1 row is repeated FAKE_SMI_REPEAT times (1500 by default), then
# one very long line of cells: damage the parser must get through quickly.  Exits 0.
import os

with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
with open(os.environ["FAKE_SMI_MATRIX"], "rb") as f:
    lines = f.read().splitlines(True)
repeat = int(os.environ.get("FAKE_SMI_REPEAT", "1500"))
row = next(line for line in lines if line.startswith(b"GPU1"))
out = b"".join(lines[:2]) + row * repeat + b"".join(lines[2:]) + b"NV18 " * 100000 + b"\n"
view = memoryview(out)
while view:
    n = os.write(1, view)
    view = view[n:]
