"""Execution providers as plugins: onnxruntime plugin libraries shipped in pip packages, found through the
``olive.execution_providers`` entry-point group.

- :mod:`olive.execution_providers.adapter`: :class:`ExecutionProviderAdapter`, the interface (and the how-to
  for a provider's own adapter), :class:`OptionSpec`.
- :mod:`olive.execution_providers.known`: the adapters olive-core ships for the packages that exist today.
- :mod:`olive.execution_providers.registry`: discovery, one registration per process, device choice, and
  the listing ``olive eps`` prints.

Sessions on a plugin provider are made by :func:`olive.measure.create_session`, like every other session.
"""

from olive.execution_providers.adapter import EPOptionError, EPUnavailableError, ExecutionProviderAdapter, OptionSpec

__all__ = ["EPOptionError", "EPUnavailableError", "ExecutionProviderAdapter", "OptionSpec"]
