"""superop's SQL dialect reads and writes string literals exactly as Spark 4 does.

Table-driven against Spark itself: for every literal, the value Spark reads from the
original text equals (1) the value superop's parser reads and (2) the value Spark reads
from superop's re-generated text."""
from __future__ import annotations

import pytest
from sqlglot import exp

from superop.errors import SqlError
from superop.ir.dialect import DIALECT, check_session_dialect, parse_one

LITERALS = [
    # doubled quotes (Spark 4: one quote character)
    r"'it''s'", r"'%''%'", r"''''", r"'a''b''c'", r"'''x'''", r"''",
    r'"it""s"', r'"say ""hi"""',
    # backslash escapes
    r"'a\'b'", r"'\''", r"'\n'", r"'a\tb'", r"'\\'", r"'\\\\'", r"'\0'", r"'\101'",
    r"'\%'", r"'\_'", r"'\z'", r'"a\"b"',
    # unicode escapes and raw unicode
    r"'\u0041'", r"'\U0001F600'", "'é☃ü'",
    # double-quoted strings (a string, not an identifier, in Spark's default mode)
    r'"dq"', r'''"a'b"''', r"""'a"b'""",
    # raw strings: no escapes at all
    r"r'a\nb'", r'R"x\y"', r"r'\\'",
    # adjacent literals are ONE literal
    r"'a' 'b'", r"""'a' "b" 'c'""", r"'it''s' 'x'", r"'a' r'\n'", r"r'a''b'",
    # a literal spanning lines
    "'line1\nline2'",
]


def _spark_value(spark, lit: str):
    return spark.sql(f"SELECT {lit} AS v").first().v


@pytest.mark.parametrize("lit", LITERALS)
def test_literal_means_what_spark_reads(spark, lit):
    expected = _spark_value(spark, lit)
    tree = parse_one(f"SELECT {lit} AS v")
    item = tree.expressions[0].this
    # superop reads one literal with Spark's value (adjacent literals folded)
    assert isinstance(item, (exp.Literal, exp.RawString)), repr(item)
    assert item.this == expected
    # and writes text Spark reads back as the same value
    regenerated = tree.sql(dialect=DIALECT)
    assert spark.sql(regenerated).first().v == expected, regenerated


@pytest.mark.parametrize("cond", [
    r"'it''s' = 'it\'s'", r"'it''s' LIKE '%''%'", r"'its' LIKE '%''%'", r"'a\%b' LIKE 'a\%b'",
    r"'ab' = 'a' 'b'", r"'x''' IN ('x''', 'y')",
])
def test_predicates_over_literals_keep_their_value(spark, cond):
    expected = spark.sql(f"SELECT {cond} AS v").first().v
    regenerated = parse_one(f"SELECT {cond} AS v").sql(dialect=DIALECT)
    assert spark.sql(regenerated).first().v == expected, regenerated


def test_concat_is_not_confused_with_adjacent_literals():
    assert parse_one("SELECT CONCAT('a', 'b')").sql(dialect=DIALECT) == "SELECT CONCAT('a', 'b')"
    assert parse_one("SELECT 'a' AS b").sql(dialect=DIALECT) == "SELECT 'a' AS b"


def test_escaped_string_literals_mode_is_refused(spark):
    spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")
    try:
        with pytest.raises(SqlError, match="escapedStringLiterals"):
            check_session_dialect(spark)
    finally:
        spark.conf.set("spark.sql.parser.escapedStringLiterals", "false")
    check_session_dialect(spark)
