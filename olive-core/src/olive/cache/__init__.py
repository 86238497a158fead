"""The content-addressed cache of pass runs and evaluations."""

from olive.cache.store import CacheStore, hash_file, hash_model

__all__ = ["CacheStore", "hash_file", "hash_model"]
