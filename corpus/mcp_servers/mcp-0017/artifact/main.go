package main

import (
	"context"
	"os/exec"
	"regexp"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

var name = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func getPods(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ns := req.GetString("namespace", "default")
	if !name.MatchString(ns) {
		return mcp.NewToolResultError("invalid namespace"), nil
	}
	out, err := exec.CommandContext(ctx, "kubectl", "get", "pods", "-n", ns, "-o", "wide").CombinedOutput()
	if err != nil {
		return mcp.NewToolResultError(string(out)), nil
	}
	return mcp.NewToolResultText(string(out)), nil
}

func main() {
	s := server.NewMCPServer("kube-ro", "0.1.0")
	s.AddTool(mcp.NewTool("get_pods",
		mcp.WithDescription("List pods in a namespace (read-only)."),
		mcp.WithString("namespace", mcp.DefaultString("default")),
	), getPods)
	server.ServeStdio(s)
}
