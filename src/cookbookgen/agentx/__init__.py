"""Read, write and decode SGLang cookbook AgentX data modules (`agentx/<org>/<model>.jsx`)."""
