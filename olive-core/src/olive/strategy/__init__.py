"""Old home of the search parameters: ``olive.strategy.search_parameter`` is :mod:`olive.search.search_parameter`
itself (one module object under both names), so passes written for Microsoft Olive import unchanged."""

import sys

from olive.search import search_parameter

# Python looks a submodule up in sys.modules once its package has run, before searching for a file.
sys.modules[f"{__name__}.search_parameter"] = search_parameter
