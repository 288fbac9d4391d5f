package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

var token = os.Getenv("GITHUB_PERSONAL_ACCESS_TOKEN")

func listIssues(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	owner, err := req.RequireString("owner")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	repo, err := req.RequireString("repo")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	url := fmt.Sprintf("https://api.github.com/repos/%s/%s/issues?state=open", owner, repo)
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Accept", "application/vnd.github+json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	defer resp.Body.Close()
	var issues []struct {
		Number int    `json:"number"`
		Title  string `json:"title"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&issues); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	out := ""
	for _, i := range issues {
		out += fmt.Sprintf("#%d %s\n", i.Number, i.Title)
	}
	return mcp.NewToolResultText(out), nil
}

func main() {
	s := server.NewMCPServer("gh-issues", "1.3.0")
	s.AddTool(mcp.NewTool("list_issues",
		mcp.WithDescription("List open issues of a GitHub repository."),
		mcp.WithString("owner", mcp.Required()),
		mcp.WithString("repo", mcp.Required()),
	), listIssues)
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
