"""jax._src.xla_bridge: the backends, created on first use."""
_backends = {}
