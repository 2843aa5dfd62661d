"""Secrets are redacted before anything is kept: each common token shape, inside the commands
and outputs where sessions meet them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.capture.redact import redact, replaced

# Built from parts: no whole token of a real shape sits in the repository.
A40 = "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7"
SECRETS = {
    "aws key": "AKIA" + "IOSFODNN7EXAMPLE",
    "github token": "ghp_" + A40[:36],
    "github pat": "github_pat_" + "11ABCDEFG0" + A40[:40],
    "openai key": "sk-" + "proj-" + A40,
    "anthropic key": "sk-ant-" + "api03-" + A40,
    "slack token": "xoxb-" + "1234567890-" + A40[:24],
    "google key": "AIza" + A40[:35],
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + A40[:30],
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_token_shape_is_redacted_in_its_context(name: str) -> None:
    secret = SECRETS[name]
    for text in (f"export TOKEN={secret}", f"curl -H 'X-Key: {secret}' https://api.example.com",
                 f"Error: 401 for key {secret} (revoked)"):
        redacted = redact(text)
        assert secret not in redacted and "[REDACTED:" in redacted, (name, text)


@pytest.mark.parametrize("text", [
    "curl -H 'Authorization: Bearer " + A40 + "' https://api.example.com",
    "psql postgres://admin:hunter2secret@db.internal:5432/app",
    "mysql -u root --password=hunter2secret",
    'DATABASE_PASSWORD="hunter2secret" make migrate',
    '{"api_key": "hunter2secret", "name": "x"}',
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
])
def test_credentials_in_headers_urls_and_assignments_are_redacted(text: str) -> None:
    redacted = redact(text)
    assert "hunter2secret" not in redacted and A40 not in redacted
    assert "wJalrXUtnFEMI" not in redacted and "[REDACTED:" in redacted


def test_a_private_key_block_is_redacted_whole() -> None:
    block = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE\n"
             "bm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQy\n-----END OPENSSH PRIVATE KEY-----")
    redacted = redact(f"cat ~/.ssh/id_ed25519\n{block}\ndone")
    assert "b3BlbnNzaC1rZXkt" not in redacted and "bm9uZQAA" not in redacted
    assert redacted.startswith("cat ~/.ssh/id_ed25519\n") and redacted.endswith("\ndone")


def test_ordinary_text_is_left_alone() -> None:
    for text in ("python -m pytest -q tests/test_importer.py",
                 "AssertionError: assert ['a', 'b'] == ['a,b']",
                 "git commit -am 'importer: read rows with csv.reader'",
                 "the password field is hashed with argon2 in auth/hash.py",
                 "sk-learn and task-ant are no keys"):
        assert redact(text) == text


def test_control_characters_go_and_lines_stay() -> None:
    assert redact("bad\x00byte\x1b[31m\tok\nnext") == "badbyte[31m\tok\nnext"


_PIECES = [*SECRETS.values(), "password=hunter2hunter2", "api_key: 'abcd1234efgh'", "Bearer " + A40,
           "https://bob:s3cret@example.com", "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n",
           "ſecret=abcdefgh", "API_KEY=abcdefgh", "aſia", "token", "def f(x):\n", "ok ", "Ä"]


@given(st.lists(st.sampled_from(_PIECES), max_size=6))
def test_the_quick_look_for_a_secret_never_misses_what_the_shapes_find(
        pieces: list[str]) -> None:
    text = " ".join(pieces)
    assert redact(text) == replaced(text)
