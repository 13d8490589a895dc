"""Masking: sensitive keys are [hidden] in configs, and remembered secrets are scrubbed from text and logs."""

from __future__ import annotations

import logging

from sparkcat import redact


def test_sensitive_keys_by_name_and_by_declared_type():
    config = {"connection.password": "p1", "producer.override.sasl.jaas.config": "jaas", "ssl.key.password": "k",
              "sink.aws.secret.access.key": "s", "db.port": "5432", "api.key": "a", "my.credential": "c",
              "plain.typed": "t", "empty.password": "", "ref.password": "${file:/etc/x.properties:pw}"}
    masked = redact.mask_config(config, password_keys={"plain.typed"})
    assert masked == {**{k: "[hidden]" for k in config}, "db.port": "5432", "empty.password": "",
                      "ref.password": "${file:/etc/x.properties:pw}"}


def test_remembered_secrets_are_scrubbed_from_text_and_log_records(caplog):
    redact.remember_secret("hunter2-secret")
    redact.remember_secret("ab")  # too short to scrub safely
    assert redact.scrub("login with hunter2-secret failed, ab") == "login with [hidden] failed, ab"
    log = logging.getLogger("sparkcat.test.redact")
    with caplog.at_level(logging.INFO, logger=log.name):  # the logger's own level too: it may not be a plain Logger
        log.info("password is %s", "hunter2-secret")
        try:
            raise RuntimeError("bad password hunter2-secret")
        except RuntimeError:
            log.exception("failed")
    text = caplog.text
    assert "hunter2-secret" not in text and "password is [hidden]" in text and "bad password [hidden]" in text


def test_secrets_are_scrubbed_from_exceptions_that_a_formatter_reads_itself(capsys):
    # pyspark's PySparkLogger.getLogger can leave its logger class set (two threads racing); a logger created
    # then prints records as JSON, reading the exception object itself instead of the scrubbed exc_text.
    from pyspark.logger import PySparkLogger

    redact.remember_secret("hunter3-secret")
    previous = logging.getLoggerClass()
    logging.setLoggerClass(PySparkLogger)
    try:
        log = logging.getLogger("sparkcat.test.redact.json")
    finally:
        logging.setLoggerClass(previous)
    try:
        raise RuntimeError("bad password hunter3-secret")
    except RuntimeError:
        log.exception("failed")
    err = capsys.readouterr().err
    assert '"msg": "bad password [hidden]"' in err and "hunter3-secret" not in err
