module example.com/reports

go 1.22
