"""Built-in connectors: plugins like any other, named in ``sparkcat.plugins``, one module each."""
