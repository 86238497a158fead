"""Helpers under the module paths Microsoft Olive's passes import them from (``olive.common.utils``)."""
