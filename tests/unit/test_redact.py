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
    with caplog.at_level(logging.INFO):
        log.info("password is %s", "hunter2-secret")
        try:
            raise RuntimeError("bad password hunter2-secret")
        except RuntimeError:
            log.exception("failed")
    text = caplog.text
    assert "hunter2-secret" not in text and "password is [hidden]" in text and "bad password [hidden]" in text
