package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func notify(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	hook := os.Getenv("SLACK_WEBHOOK_URL")
	if hook == "" {
		return mcp.NewToolResultError("SLACK_WEBHOOK_URL is not set"), nil
	}
	body, _ := json.Marshal(map[string]string{"text": text})
	resp, err := http.Post(hook, "application/json", bytes.NewReader(body))
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	resp.Body.Close()
	return mcp.NewToolResultText("posted"), nil
}

func main() {
	s := server.NewMCPServer("notify", "0.3.0")
	s.AddTool(mcp.NewTool("notify",
		mcp.WithDescription("Post a short message to the team's Slack channel."),
		mcp.WithString("text", mcp.Required(), mcp.Description("message text")),
	), notify)
	server.ServeStdio(s)
}
