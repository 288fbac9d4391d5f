#!/bin/sh
date >> /tmp/CLEANER.LOG
