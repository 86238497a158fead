"""Old home of the search parameters, kept so passes written for Microsoft Olive import unchanged."""
