#include <cstdio>
int main() { std::puts("tally: under construction"); return 0; }
