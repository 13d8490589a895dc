"""Kafka Connect-compatible REST API of the sparkcat driver (FastAPI, served by uvicorn).

``create_app(driver)`` builds the application; ``RestServer(driver, host, port)`` serves
it from a daemon thread. Every write goes through the driver's ``Herder``; reads come
from the herder's snapshot and the status and offsets views shared with the CLI.
"""
