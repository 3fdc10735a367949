# Hangs forever and ignores SIGTERM: only SIGKILL ends it.
import os
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(os.environ["FAKE_SMI_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
while True:
    time.sleep(1000)
