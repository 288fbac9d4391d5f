package store

import (
	"database/sql"

	_ "github.com/lib/pq"
)

const dsn = "postgres://inventory:Sup3rS3cretInv3ntoryPassw0rd@db.internal:5432/inventory?sslmode=disable"

func Open() (*sql.DB, error) {
	return sql.Open("postgres", dsn)
}
