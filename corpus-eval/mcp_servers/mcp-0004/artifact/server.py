import os

import psycopg
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("postgres-ro")
DSN = os.environ["DATABASE_URL"]


@mcp.tool()
def query(sql: str) -> list[dict]:
    """Run a read-only SQL query and return up to 200 rows."""
    with psycopg.connect(DSN) as conn:
        conn.read_only = True
        with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
            cur.execute("SET statement_timeout = 5000")
            cur.execute(sql)
            return cur.fetchmany(200)


@mcp.tool()
def describe(table: str) -> list[dict]:
    """Describe a table's columns."""
    with psycopg.connect(DSN) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        cur.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
            (table,),
        )
        return cur.fetchall()


if __name__ == "__main__":
    mcp.run()
