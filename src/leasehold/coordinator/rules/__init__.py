"""Pure rules: no asyncio, no store, no logging; each a function of its inputs."""
