module example.com/avatars

go 1.22
