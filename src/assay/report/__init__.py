"""Round reports: one module per format behind `interface.ReportFormat`."""
