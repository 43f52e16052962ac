import pytest

from tidemark.duration import format_duration_ms, parse_duration_ms


@pytest.mark.parametrize(
    "text, ms", [("500ms", 500), ("30s", 30_000), ("10m", 600_000), ("2h", 7_200_000), ("7d", 604_800_000), ("0s", 0)]
)
def test_parse(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("bad", ["-1s", "10", 10, "1.5h", "ten minutes", None, True, "5w"])
def test_rejects_with_a_message(bad):
    with pytest.raises(ValueError, match="duration|ambiguous"):
        parse_duration_ms(bad)


def test_format_is_the_shortest_exact_spelling():
    assert format_duration_ms(600_000) == "10m"
    assert format_duration_ms(90_000) == "90s"
    assert format_duration_ms(1_500) == "1500ms"
