# Fails at once, as nvidia-smi does without a loaded driver.
echo $$ >> "$FAKE_SMI_PIDS"
echo "${FAKE_SMI_MESSAGE:-NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.}" >&2
exit 9
