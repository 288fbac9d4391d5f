#include <napi.h>
// native implementation elided in this sample
Napi::Object Init(Napi::Env env, Napi::Object exports) { return exports; }
NODE_API_MODULE(bcrypt_lib, Init)
