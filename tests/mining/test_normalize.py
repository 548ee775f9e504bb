from superop.mining.normalize import normalize, statement_kind, template_id


def test_literals_become_placeholders_and_layout_is_ignored():
    a = normalize("SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 AND d = 'it''s' GROUP BY a")
    b = normalize("select a,count(*) as n\n  from ops -- nightly\n where s<7 and d=\"x\" group by a;")
    assert a == b == "select a,count(*)as n from ops where s<? and d=? group by a"
    assert template_id(a) == template_id(b)


def test_in_lists_collapse_and_identifiers_with_digits_survive():
    a = normalize("SELECT t1.c2 FROM ops t1 WHERE d IN ('a', 'b', 'c') AND x = 1.5e3 /* c */")
    b = normalize("SELECT t1.c2 FROM ops t1 WHERE d IN ('z') AND x = 7")
    assert a == b
    assert "t1.c2" in a and "ops t1" in a


def test_quoted_identifiers_are_not_literals():
    a = normalize("SELECT `col 1` FROM ops WHERE `x2` = 3")
    assert "`col 1`" in a and "`x2`" in a and "=?" in a


def test_different_structure_gives_different_templates():
    assert normalize("SELECT a FROM ops WHERE s < 1") != normalize("SELECT a FROM ops WHERE s > 1")
    assert normalize("SELECT a FROM ops") != normalize("SELECT b FROM ops")


def test_statement_kind():
    assert statement_kind(normalize("WITH x AS (SELECT 1) SELECT * FROM x")) == "query"
    assert statement_kind(normalize("(SELECT 1) UNION ALL (SELECT 2)")) == "query"
    assert statement_kind(normalize("SET spark.sql.shuffle.partitions = 200")) == "non_query:set"
    assert statement_kind(normalize("INSERT INTO t SELECT * FROM ops")) == "non_query:insert"
    assert statement_kind(normalize("   ")) == "non_query:empty"


def test_progress_display_names_each_phase(capsys):
    from superop.mining.job import Progress
    p = Progress(enabled=True)
    with p.phase("read", "log.jsonl"):
        pass
    with p.phase("analyze"):
        pass
    err = capsys.readouterr().err
    assert "[mine] read" in err and "log.jsonl" in err and "[mine] analyze" in err
    assert set(p.seconds) == {"read", "analyze"}


def test_typos_go_to_the_parser_not_to_non_query():
    assert statement_kind(normalize("SELEC a FROM ops")) == "query"     # -> parse_error later
    assert statement_kind(normalize("DESCRIBE ops")) == "non_query:describe"
