"""--explain lays the query's SQL out (sqlparse): clauses on lines of their own, keywords
upper-cased, comments gone; literals and identifiers exactly as written."""
from job.plan.explain import formatted_sql


def test_clauses_on_their_own_lines_and_keywords_upper_cased():
    lines = formatted_sql("select accountId, count(*) as n from users -- why\n where note = 'select from' group by accountId")
    assert lines[0] == "SELECT accountId,"
    assert "FROM users" in lines
    assert any(line.strip() == "WHERE note = 'select from'" for line in lines)
    assert lines[-1].strip() == "GROUP BY accountId"
    assert not any("why" in line for line in lines)
