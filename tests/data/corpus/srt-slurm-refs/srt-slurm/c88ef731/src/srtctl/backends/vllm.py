class VLLMProtocol:
    set_cuda_visible_devices: bool = False
