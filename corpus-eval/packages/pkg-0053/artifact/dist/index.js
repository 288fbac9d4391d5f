"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.useField = void 0;
const react_1 = require("react");
function useField(initial, validate) {
    const [value, setValue] = (0, react_1.useState)(initial);
    const error = validate ? validate(value) : null;
    return { value, setValue, error };
}
exports.useField = useField;
