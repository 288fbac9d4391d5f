module.exports = { graph: () => ({ nodes: [], edges: [] }) };
