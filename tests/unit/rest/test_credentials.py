"""Connect's credentials file format (Java properties) and the Basic/bearer checks built on it."""

from __future__ import annotations

import base64
import logging

import pytest

from sparkcat.errors import ConfigError
from sparkcat.rest.credentials import PasswordFile, TokenFile, basic_credentials, bearer_token, parse_properties


def test_connects_documented_example_and_java_properties_variants():
    text = "\n".join([
        "# Connect's docs: thisismyusername: thisismypass",
        "thisismyusername: thisismypass",
        "! also a comment",
        "   indented=value with spaces",
        "spaced   pass word",
        "escaped\\:user = p\\u00e4ss\\=x",
        "continued = first\\",
        "    second",
        "empty=",
    ])
    assert parse_properties(text) == {
        "thisismyusername": "thisismypass", "indented": "value with spaces", "spaced": "pass word",
        "escaped:user": "päss=x", "continued": "firstsecond", "empty": ""}


def test_a_jetty_realm_line_keeps_its_roles_in_the_password_as_connect_does():
    # Connect's PropertyFileLoginModule compares the whole value; "pw,admin" is the password.
    users = PasswordFile.parse("fred: pw,admin")
    assert users.check("fred", "pw,admin") == "fred" and users.check("fred", "pw") is None


def test_passwords_are_checked_exactly_and_unknown_users_fail():
    users = PasswordFile.parse("alice: s3cret\nbob: \n")
    assert users.check("alice", "s3cret") == "alice"
    assert users.check("alice", "s3cret ") is None and users.check("Alice", "s3cret") is None
    assert users.check("mallory", "s3cret") is None
    assert users.check("bob", "") == "bob"  # an empty password is a password, as in Connect
    assert b"s3cret" not in repr(users).encode()


def test_tokens_name_their_holder_and_only_exact_tokens_pass(tmp_path):
    path = tmp_path / "tokens"
    path.write_text("ci: tok-AAA\nops = tok-BBB\n")
    path.chmod(0o600)
    tokens = TokenFile.load(str(path))
    assert tokens.check("tok-BBB") == "ops" and tokens.check("tok-AAA") == "ci"
    assert tokens.check("tok-AA") is None and tokens.check("") is None


@pytest.mark.parametrize("loader,key", [(PasswordFile.load, "rest.auth.basic.credentials.file"),
                                        (TokenFile.load, "rest.auth.bearer.tokens.file")])
def test_a_missing_or_empty_file_refuses_to_start_naming_the_key(tmp_path, loader, key):
    with pytest.raises(ConfigError, match="cannot read") as e:
        loader(str(tmp_path / "nope"))
    assert key in e.value.errors
    empty = tmp_path / "empty"
    empty.write_text("# nobody yet\n")
    with pytest.raises(ConfigError, match="no entries"):  # Connect would let everyone in
        loader(str(empty))


def test_a_file_others_can_read_gets_a_warning_without_its_secrets(tmp_path, caplog):
    path = tmp_path / "creds"
    path.write_text("alice: s3cret-value\n")
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="sparkcat.rest"):
        PasswordFile.load(str(path))
    assert "chmod 600" in caplog.text and "s3cret-value" not in caplog.text


def test_authorization_headers_are_parsed_like_connects_filter():
    def basic(raw: bytes) -> str:
        return "Basic " + base64.b64encode(raw).decode()

    assert basic_credentials(basic(b"alice:s3:cret")) == ("alice", "s3:cret")
    assert basic_credentials(basic(b"alice:")) == ("alice", "")
    assert basic_credentials("basic " + base64.b64encode(b"u:p").decode()) == ("u", "p")  # scheme any case
    assert basic_credentials(basic(b":nouser")) is None and basic_credentials(basic(b"nocolon")) is None
    assert basic_credentials("Basic not-base64!") is None and basic_credentials("Bearer x") is None
    assert bearer_token("Bearer abc ") == "abc" and bearer_token("Basic abc") is None and bearer_token("Bearer") is None
