"""Connector plugins that exist only for tests (allowed through the worker's ``plugin.packages``)."""
