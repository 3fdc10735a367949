"""NVML's vocabulary, in nvtopo's own copies: derive must not import pynvml.

Return codes and what they mean to the user, field ids, the enums of link states,
versions, remote device types, topology levels, P2P status and architectures, the fabric
info members, and the bounds a recorded answer must stay within.  Plain data: every other
module of the NVML probe (and the pasted-text reader) takes its words from here.
"""

from __future__ import annotations

from typing import Dict, Tuple

SOURCE = "nvml"
DEFAULT_TIMEOUT = 30.0
#: Layout version of ``probes["nvml"]`` in snapshots.
EVIDENCE_VERSION = 1
#: Largest values of NVML's unsigned 32- and 64-bit integers.
U32 = 2**32 - 1
U64 = 2**64 - 1

#: nvmlReturn_t codes (identical in pynvml and nvml.h).
ERROR_NAMES: Dict[int, str] = {
    1: "Uninitialized", 2: "InvalidArgument", 3: "NotSupported", 4: "NoPermission",
    5: "AlreadyInitialized", 6: "NotFound", 7: "InsufficientSize", 8: "InsufficientPower",
    9: "DriverNotLoaded", 10: "Timeout", 11: "IrqIssue", 12: "LibraryNotFound",
    13: "FunctionNotFound", 14: "CorruptedInforom", 15: "GpuIsLost", 16: "ResetRequired",
    17: "OperatingSystem", 18: "LibRmVersionMismatch", 19: "InUse", 20: "Memory",
    21: "NoData", 23: "InsufficientResources", 25: "ArgumentVersionMismatch",
    26: "Deprecated", 27: "NotReady", 28: "GpuNotFound", 29: "InvalidState", 999: "Unknown",
}
ERROR_CODES: Dict[str, int] = {v: k for k, v in ERROR_NAMES.items()}

#: How the chokepoint reads an error: what it means to the user.
NOT_SUPPORTED = ("NotSupported", "FunctionNotFound")
NOT_PERMITTED = ("NoPermission",)
NO_SUCH = ("InvalidArgument",)
LOST = ("GpuIsLost", "Skipped")  # Skipped: not asked, the GPU was lost earlier
#: A recorded answer of the wrong type or range (a damaged snapshot): see VALUE_CHECKS.
BAD = ("BadValue",)
#: Why NVML as a whole is unavailable (from ``nvmlInit``).
UNAVAILABLE_REASONS = {
    "LibraryNotFound": "no NVIDIA driver (libnvidia-ml.so.1 not found)",
    "DriverNotLoaded": "NVIDIA kernel driver not loaded",
    "LibRmVersionMismatch": "NVML library and kernel driver versions differ "
                            "(driver upgraded without reboot?)",
    "NoPermission": "no permission to use NVML",
    "FunctionNotFound": "NVML library too old for this nvidia-ml-py",
}

#: nvmlDeviceGetNvLinkVersion enum -> NVLink generation.
NVLINK_VERSIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0",
                   8: "6.0"}
#: nvmlNvLinkDeviceType_t -> our remote type.
REMOTE_TYPES = {0: "gpu", 1: "npu", 2: "nvswitch", 0xFF: "unknown"}
#: nvmlGpuTopologyLevel_t -> ``topo -m`` token (INTERNAL, a dual-GPU board, has none).
TOPOLOGY_LEVELS = {10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
#: nvmlGpuP2PStatus_t -> ``topo -p2p`` token.
P2P_TOKENS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DR", 5: "NS", 6: "U"}
#: P2P capability index -> name.  Plain ints: pynvml's NVML_P2P_CAPS_INDEX_READ is ``(0,)``.
P2P_INDEXES = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3))
ARCHITECTURES = {2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere",
                 8: "ada", 9: "hopper", 10: "blackwell", 13: "rubin"}

# Field ids (nvmlDeviceGetFieldValues).
FI_NVLINK_LINK_COUNT = 91
FI_PCIE_REPLAY_COUNTER = 94
FI_NVLINK_REMOTE_NVLINK_ID = 146
FI_NVSWITCH_CONNECTED_LINK_COUNT = 147
FI_NVLINK_ERROR_DL_REPLAY = 161
FI_NVLINK_ERROR_DL_RECOVERY = 162
FI_NVLINK_ERROR_DL_CRC = 163
FI_NVLINK_GET_SPEED = 164
FI_NVLINK_GET_STATE = 165
FI_NVLINK_GET_VERSION = 166
#: NVML_FI_DEV_NVLINK_SPEED_MBPS_L0..L11 (84-89, 132-137) and _COMMON (90): the older
#: per-link speed fields, asked only for active links field 164 gave no speed for (Pascal
#: and Volta drivers answer these, not 164; docs/nvml.md §3).
FI_NVLINK_SPEED_MBPS_LINK = tuple(range(84, 90)) + tuple(range(132, 138))
FI_NVLINK_SPEED_MBPS_COMMON = 90
#: Per-link fields read in one batch per GPU.
LINK_FIELDS = (FI_NVLINK_GET_STATE, FI_NVLINK_GET_VERSION, FI_NVLINK_GET_SPEED,
               FI_NVLINK_REMOTE_NVLINK_ID, FI_NVLINK_ERROR_DL_REPLAY,
               FI_NVLINK_ERROR_DL_RECOVERY, FI_NVLINK_ERROR_DL_CRC)
#: Error counter -> (link-scoped field id or None, nvmlDeviceGetNvLinkErrorCounter counter id).
ERROR_COUNTERS = (("replay", FI_NVLINK_ERROR_DL_REPLAY, 0),
                  ("recovery", FI_NVLINK_ERROR_DL_RECOVERY, 1),
                  ("crc_flit", FI_NVLINK_ERROR_DL_CRC, 2),
                  ("crc_data", None, 3),
                  ("ecc", None, 4))
#: CRC-data and ECC counters have no link-scoped field, only one field id per link for links
#: 0-11 (NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L0..L11, ..._ECC_DATA_ERROR_COUNT_L0..L11;
#: nvml.h says "Lane", they are per link).  Read in the batch where they exist; that they
#: equal nvmlDeviceGetNvLinkErrorCounter's counters is checked once per GPU (first active
#: link), and the function is trusted where they differ.  Links 12+ use the function.
LEGACY_COUNTER_FIELDS: Dict[str, Tuple[int, ...]] = {
    "crc_data": tuple(range(39, 45)) + tuple(range(102, 108)),
    "ecc": tuple(range(148, 160)),
}
#: NVLink-C2C, the CPU-GPU link of Grace superchips (NVML_FI_DEV_C2C_LINK_COUNT,
#: _GET_STATUS, _GET_MAX_BW; the last two scoped by link).  docs/nvml.md §9.
FI_C2C_LINK_COUNT = 170
FI_C2C_LINK_GET_STATUS = 171
FI_C2C_LINK_GET_MAX_BW = 172
#: Field 171 values (nvml.h: 0 inactive, 1 active).
C2C_LINK_STATUS = {0: "inactive", 1: "active"}
#: The most C2C links a GPU may have (more is a damaged recording).
MAX_C2C_LINKS = 64
#: GPUs whose NVML is asked about C2C: Grace superchips, by the name NVML gives them
#: (``NVIDIA GH200 480GB``, ``NVIDIA GB200``).  Asked only there, so recordings of other
#: GPUs do not change; a Grace GPU of another name is "C2C unknown", never "C2C down".
C2C_GPU_NAMES = ("GH200", "GB200", "GB300")
#: Field 165 (NVML_FI_DEV_NVLINK_GET_STATE) values.
LINK_STATE_FIELD = {0: "inactive", 1: "active", 2: "sleep", 3: "traffic_disabled"}
#: Link loop bound when field 91 is not answered (stop earlier on InvalidArgument), and the
#: most links a GPU may have (field 91 above it is a bad value).  Not
#: pynvml.NVML_NVLINK_MAX_LINKS: that changes between wheels (12, 18, 36).
FALLBACK_MAX_LINKS = 64
MAX_LINKS = FALLBACK_MAX_LINKS
#: The most GPUs one NVML may count; more is a damaged recording, not a machine.
MAX_GPUS = 1024
#: Bad recorded values noted one by one; the rest in one note.
MAX_BAD_NOTES = 20
#: Affinity mask sizes in 64-bit words: 4096 CPUs, 256 NUMA nodes.
CPU_WORDS = 64
NODE_WORDS = 4

# Fabric (nvmlGpuFabricInfo): own constants; some wheels have wrong mask widths.
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
FABRIC_SUMMARY = {0: "not_supported", 1: "healthy", 2: "unhealthy", 3: "limited_capacity"}
FABRIC_HEALTH_BITS = (  # name, shift, width
    ("degraded_bandwidth", 0, 0x3), ("route_recovery", 2, 0x3), ("route_unhealthy", 4, 0x3),
    ("access_timeout_recovery", 6, 0x3), ("incorrect_configuration", 8, 0xF),
    ("partition_assigned", 12, 0x3), ("gfm_state", 14, 0x3),
)
INCORRECT_CONFIGURATION = {1: "none", 2: "incorrect_sysguid", 3: "incorrect_chassis_sn",
                           4: "no_partition", 5: "insufficient_nvlinks",
                           6: "incompatible_gpu_fw", 7: "invalid_location",
                           8: "gpu_state_invalid"}
