{
  "targets": [
    {
      "target_name": "bcrypt_lib",
      "sources": ["src/bcrypt.cc", "src/blowfish.cc"],
      "include_dirs": ["<!@(node -p \"require('node-addon-api').include\")"],
      "defines": ["NAPI_DISABLE_CPP_EXCEPTIONS"]
    }
  ]
}
