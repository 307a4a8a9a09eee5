// A program that does nothing: the sanitizer build compiles it to make the precompiled header
// of LibTorch's and Catch2's headers that the test programs share (tests/CMakeLists.txt).
int main() { return 0; }
