# Hangs in a shell grandchild: nvidia-smi (this sh) -> sh -c -> sleep.  Killing only the
# direct child leaves the other two running, holding the pipes open.
echo $$ >> "$FAKE_SMI_PIDS"
sh -c 'echo $$ >> "$FAKE_SMI_PIDS"; sleep 1000 & echo $! >> "$FAKE_SMI_PIDS"; wait'
exit 0
