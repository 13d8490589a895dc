"""One module per bench scenario; each has ``run(bench)``, which adds its figures to ``bench.figures``."""
