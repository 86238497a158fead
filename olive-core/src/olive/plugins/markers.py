"""The marker plugin authors decorate hook implementations with: ``from olive.plugins import hookimpl``."""

import pluggy

hookimpl = pluggy.HookimplMarker("olive")
