/* placeholder replaced by the events work */
int main(void) { return 0; }
