# Not srtctl's file: one fact of src/srtctl/backends/vllm.py at deb1dfd9 (line 354): no set_cuda_visible_devices setting
    def build_worker_command(
