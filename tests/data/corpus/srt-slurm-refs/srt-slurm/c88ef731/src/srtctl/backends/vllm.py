class VLLMProtocol:
    set_cuda_visible_devices: bool = False
    dp_launch_mode: DPLaunchMode = "per_node"  # noqa: F821 (an excerpt: the type is defined above it in srtctl)
