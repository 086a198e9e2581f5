# Not srtctl's file: one fact of src/srtctl/backends/vllm.py at c88ef731 (line 266)
    set_cuda_visible_devices: bool = False
